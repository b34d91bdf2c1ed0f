"""Turns CLIENT_DSN, a libpq keyword/value string, into the URL forms that
some clients need, printed as shell assignments for run.sh to eval:

  CLIENT_URL       postgresql://user:password@host:port/dbname?sslmode=...
  CLIENT_JDBC_URL  jdbc:postgresql://host:port/dbname?user=...&password=...

Standard library only, so that it runs before any client is installed."""
import shlex
import sys
from urllib.parse import quote, urlencode

# Keywords that go into the URL itself; the rest become query parameters,
# percent-encoded (libpq does not read "+" as a space).
URL_PARTS = ("host", "port", "user", "password", "dbname")


def parse_conninfo(text):
    """libpq's keyword/value syntax: key = value pairs separated by spaces;
    a value may be single-quoted, with \\' and \\\\ escapes inside."""
    params, i, n = {}, 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return params
        eq = text.find("=", i)
        if eq < 0:
            sys.exit(f"CLIENT_DSN: missing '=' after {text[i:]!r}")
        key = text[i:eq].strip()
        i = eq + 1
        while i < n and text[i].isspace():
            i += 1
        value = []
        if i < n and text[i] == "'":
            i += 1
            while i < n and text[i] != "'":
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                sys.exit("CLIENT_DSN: unterminated quoted value")
            i += 1
        else:
            while i < n and not text[i].isspace():
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
        params[key] = "".join(value)


def urls(params):
    host = params.get("host", "localhost")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = params.get("port", "5432")
    dbname = params.get("dbname", params.get("user", "postgres"))
    user = params.get("user", "postgres")
    password = params.get("password")
    extra = {k: v for k, v in params.items() if k not in URL_PARTS}

    userinfo = quote(user, safe="")
    if password is not None:
        userinfo += ":" + quote(password, safe="")
    url = f"postgresql://{userinfo}@{host}:{port}/{quote(dbname, safe='')}"
    if extra:
        url += "?" + urlencode(extra, quote_via=quote)

    jdbc_params = {"user": user}
    if password is not None:
        jdbc_params["password"] = password
    jdbc_params.update(extra)
    jdbc = f"jdbc:postgresql://{host}:{port}/{quote(dbname, safe='')}?{urlencode(jdbc_params, quote_via=quote)}"
    return url, jdbc


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: dsn.py 'host=... port=... user=... dbname=...'")
    url, jdbc = urls(parse_conninfo(sys.argv[1]))
    print(f"CLIENT_URL={shlex.quote(url)}")
    print(f"CLIENT_JDBC_URL={shlex.quote(jdbc)}")


if __name__ == "__main__":
    main()
