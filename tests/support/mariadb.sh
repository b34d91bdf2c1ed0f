# Shared by the setup scripts that change MariaDB's configuration: its
# settings are read at startup only. Source it, then call restart_mariadb.

# Stops the local MariaDB, waits until its process is gone (it stops
# answering earlier), starts it again and waits until it answers.
restart_mariadb() {
    mariadb-admin -h 127.0.0.1 -P 3306 -u root shutdown 2>/dev/null || true
    for _ in $(seq 1 120); do
        pgrep -x mariadbd >/dev/null || break
        sleep 0.5
    done
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
    for _ in $(seq 1 60); do
        mariadb-admin -h 127.0.0.1 -P 3306 -u root ping >/dev/null 2>&1 && break
        sleep 0.5
    done
}
