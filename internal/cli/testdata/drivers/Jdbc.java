// Jdbc runs, with pgjdbc, the protocol forms TestDrivers replays: a
// fetch size of 100 over 2,000 rows (a portal read 100 rows at a time),
// a large object written through pgjdbc's fast-path calls, and a
// statement cancelled by its query timeout. It connects to PGHOST and
// PGPORT as PGUSER and prints what each step saw.
import java.sql.*;
import org.postgresql.PGConnection;
import org.postgresql.largeobject.*;

public class Jdbc {
  public static void main(String[] a) throws Exception {
    String url = "jdbc:postgresql://" + System.getenv("PGHOST") + ":" + System.getenv("PGPORT") + "/postgres?sslmode=disable&prepareThreshold=1";
    try (Connection c = DriverManager.getConnection(url, System.getenv("PGUSER"), "")) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement("SELECT id, v FROM big WHERE id > ? AND v <> 'jdbc'")) {
        ps.setFetchSize(100);
        ps.setInt(1, 0);
        int n = 0;
        try (ResultSet rs = ps.executeQuery()) { while (rs.next()) n++; }
        System.out.println("jdbc fetch rows " + n);
      }
      LargeObjectManager lom = c.unwrap(PGConnection.class).getLargeObjectAPI();
      long oid = lom.createLO(LargeObjectManager.READWRITE);
      LargeObject lo = lom.open(oid, LargeObjectManager.WRITE);
      lo.write("jdbc large object".getBytes());
      lo.close();
      c.commit();
      System.out.println("jdbc lo written");
      c.setAutoCommit(true);
      try (Statement st = c.createStatement()) {
        st.setQueryTimeout(1);
        st.execute("SELECT pg_sleep(5)");
        System.out.println("jdbc timeout none");
      } catch (SQLException e) { System.out.println("jdbc timeout " + e.getSQLState()); }
      try (Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT convert_from(lo_get(" + oid + "), 'UTF8')")) {
        rs.next();
        System.out.println("jdbc lo_get " + rs.getString(1));
      }
    }
  }
}
