// Connects with a pgjdbc URL (multi-host, targetServerType=...) and prints
// whether the server it chose is in recovery: "t" for a standby such as
// pgaccel, "f" for a primary. Run as a single-file program:
//   java -cp postgresql.jar TargetServer.java 'jdbc:postgresql://...'
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;

public class TargetServer {
    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(args[0]);
             ResultSet rs = conn.createStatement().executeQuery("SELECT pg_is_in_recovery()")) {
            rs.next();
            System.out.println(rs.getBoolean(1) ? "t" : "f");
        }
    }
}
