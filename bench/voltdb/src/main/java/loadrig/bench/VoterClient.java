/* The reference client of bench/voltdb-java: VoltDB's Voter driven through
 * VoltDB's official Java client (org.voltdb:voltdbclient:9.3.2), written to
 * do what `loadrig run voter --generator erlvolt --clients K --connections N`
 * does, so that the two can be compared on throughput and client CPU.
 *
 * Load: exactly K asynchronous calls of Vote in flight at all times. Each of
 * the K slots issues its next call from the callback of its previous one
 * (closed loop, no think time). Connections: the Java client opens one
 * connection per server it is given, so N connections are N Client
 * instances; client i connects to server i mod H (H servers given), and slot
 * j calls through client j mod N. The client's own limits are lifted: at
 * most max(2K, 3000) transactions outstanding per Client (never reached), no
 * rate limit, no latency auto-tuning.
 *
 * Callers, as loadrig's erlvolt generator draws them: contestant uniform in
 * 1..C, phone = area code (uniform over VoltDB's 305) * 10^7 + uniform in
 * [0, 10^7), max votes per phone 20000 (nobody reaches it).
 *
 * Timing: the load starts, runs --warmup seconds uncounted, then --duration
 * seconds measured: completions are counted from the end of the warm-up to
 * the end of the duration, then no new call is issued and the calls in
 * flight are waited for (not counted). Last line on stdout, for the script:
 *   ops=<ok> secs=<measured> accepted=<n> errors=<n> invalid=<n>
 *   over_limit=<n> window_cpu_secs=<JVM process CPU in the measured window>
 *   total_ok=<ok over the whole run: warm-up, measured, the calls drained>
 * (one line). window_cpu_secs is the whole JVM's CPU (every thread: network,
 * callbacks, JIT, GC) from OperatingSystemMXBean.getProcessCpuTime.
 */
package loadrig.bench;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.voltdb.client.Client;
import org.voltdb.client.ClientConfig;
import org.voltdb.client.ClientFactory;
import org.voltdb.client.ClientResponse;
import org.voltdb.client.ClientStatusListenerExt;
import org.voltdb.client.ProcedureCallback;

public final class VoterClient {
    /** VoltDB's Voter area codes, in the order of
     * crates/workloads/src/voter/area_codes.rs (the source of truth). */
    static final short[] AREA_CODES = {
        907, 205, 256, 334, 251, 870, 501, 479, 480, 602, 623, 928, 520, 341, 764, 628, 831, 925,
        909, 562, 661, 510, 650, 949, 760, 415, 951, 209, 669, 408, 559, 626, 442, 530, 916, 627,
        714, 707, 310, 323, 213, 424, 747, 818, 858, 935, 619, 805, 369, 720, 303, 970, 719, 860,
        203, 959, 475, 202, 302, 689, 407, 239, 850, 727, 321, 754, 954, 927, 352, 863, 386, 904,
        561, 772, 786, 305, 941, 813, 478, 770, 470, 404, 762, 706, 678, 912, 229, 808, 515, 319,
        563, 641, 712, 208, 217, 872, 312, 773, 464, 708, 224, 847, 779, 815, 618, 309, 331, 630,
        317, 765, 574, 260, 219, 812, 913, 785, 316, 620, 606, 859, 502, 270, 504, 985, 225, 318,
        337, 774, 508, 339, 781, 857, 617, 978, 351, 413, 443, 410, 301, 240, 207, 517, 810, 278,
        679, 313, 586, 947, 248, 734, 269, 989, 906, 616, 231, 612, 320, 651, 763, 952, 218, 507,
        636, 660, 975, 816, 573, 314, 557, 417, 769, 601, 662, 228, 406, 336, 252, 984, 919, 980,
        910, 828, 704, 701, 402, 308, 603, 908, 848, 732, 551, 201, 862, 973, 609, 856, 575, 957,
        505, 775, 702, 315, 518, 646, 347, 212, 718, 516, 917, 845, 631, 716, 585, 607, 914, 216,
        330, 234, 567, 419, 440, 380, 740, 614, 283, 513, 937, 918, 580, 405, 503, 541, 971, 814,
        717, 570, 878, 835, 484, 610, 267, 215, 724, 412, 401, 843, 864, 803, 605, 423, 865, 931,
        615, 901, 731, 254, 325, 713, 940, 817, 430, 903, 806, 737, 512, 361, 210, 979, 936, 409,
        972, 469, 214, 682, 832, 281, 830, 956, 432, 915, 435, 801, 385, 434, 804, 757, 703, 571,
        276, 236, 540, 802, 509, 360, 564, 206, 425, 253, 715, 920, 262, 414, 608, 304, 307,
    };

    /** Vote's return codes (crates/targets/java/voter/Vote.java). */
    static final long ACCEPTED = 0, INVALID_CONTESTANT = 1, OVER_LIMIT = 2;

    static final String USAGE = "usage: VoterClient [--servers HOST[:PORT][,...]] [--connections N]"
        + " [--outstanding K] [--duration SECS] [--warmup SECS] [--contestants C]"
        + " [--max-votes M] [--seed S]";

    // Options, with their defaults.
    String[] servers = {"127.0.0.1"};
    int connections = 1;
    int outstanding = 200;
    double duration = 10;
    double warmup = 2;
    int contestants = 6;
    long maxVotes = 20_000;
    long seed = 42;

    // Counted by the callbacks, on the clients' network threads.
    final LongAdder ok = new LongAdder();
    final LongAdder accepted = new LongAdder();
    final LongAdder invalid = new LongAdder();
    final LongAdder overLimit = new LongAdder();
    final LongAdder errors = new LongAdder();
    /** Errors by kind: a response's status, or "not sent" (callProcedure refused or threw). */
    final ConcurrentHashMap<String, LongAdder> errorKinds = new ConcurrentHashMap<>();
    final LongAdder backpressure = new LongAdder();

    void error(String kind) {
        errors.increment();
        errorKinds.computeIfAbsent(kind, k -> new LongAdder()).increment();
    }

    volatile boolean stopping;
    volatile boolean lost;
    volatile boolean closing;
    CountDownLatch stopped;
    ScheduledExecutorService retries;

    /** One of the K calls in flight: it issues its successor when it completes. */
    final class Slot implements ProcedureCallback {
        final Client client;
        final SplittableRandom rng;

        Slot(Client client, SplittableRandom rng) {
            this.client = client;
            this.rng = rng;
        }

        void call() {
            if (stopping || lost) {
                stopped.countDown();
                return;
            }
            long phone = AREA_CODES[rng.nextInt(AREA_CODES.length)] * 10_000_000L
                + rng.nextLong(10_000_000L);
            int contestant = rng.nextInt(contestants) + 1;
            boolean queued;
            try {
                queued = client.callProcedure(this, "Vote", phone, contestant, maxVotes);
            } catch (Exception e) {
                queued = false;
            }
            if (!queued) {
                // Not sent (no connection, queue full): counted, and the slot
                // tries again shortly so that it is not lost.
                error("not sent");
                retries.schedule(this::call, 10, TimeUnit.MILLISECONDS);
            }
        }

        @Override
        public void clientCallback(ClientResponse r) {
            if (r.getStatus() == ClientResponse.SUCCESS) {
                ok.increment();
                long code = r.getResults()[0].asScalarLong();
                if (code == ACCEPTED) {
                    accepted.increment();
                } else if (code == INVALID_CONTESTANT) {
                    invalid.increment();
                } else if (code == OVER_LIMIT) {
                    overLimit.increment();
                }
            } else {
                error("status " + r.getStatus() + " " + r.getStatusString());
            }
            call();
        }
    }

    /** Counters, CPU and clock at one instant. */
    record Mark(long nanos, long cpuNanos, long ok, long accepted, long invalid, long overLimit,
                long errors) {}

    Mark mark() {
        return new Mark(System.nanoTime(), processCpuNanos(), ok.sum(), accepted.sum(),
                        invalid.sum(), overLimit.sum(), errors.sum());
    }

    static long processCpuNanos() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return -1;
    }

    public static void main(String[] args) throws Exception {
        VoterClient c = new VoterClient();
        try {
            c.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("VoterClient: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
        }
        System.exit(c.run());
    }

    void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("-h") || flag.equals("--help")) {
                System.out.println(USAGE);
                System.exit(0);
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            String v = args[++i];
            try {
                switch (flag) {
                    case "--servers" -> servers = v.split(",");
                    case "--connections" -> connections = Integer.parseInt(v);
                    case "--outstanding" -> outstanding = Integer.parseInt(v);
                    case "--duration" -> duration = Double.parseDouble(v);
                    case "--warmup" -> warmup = Double.parseDouble(v);
                    case "--contestants" -> contestants = Integer.parseInt(v);
                    case "--max-votes" -> maxVotes = Long.parseLong(v);
                    case "--seed" -> seed = Long.parseLong(v);
                    default -> throw new IllegalArgumentException("unknown flag " + flag);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(flag + ": not a number: " + v);
            }
        }
        if (connections < 1 || outstanding < 1 || duration <= 0 || warmup < 0
                || contestants < 1 || contestants > 12 || maxVotes < 1) {
            throw new IllegalArgumentException("connections, outstanding, duration, contestants (1..12)"
                + " and max votes must be positive, warm-up not negative");
        }
    }

    /** A lost connection stops the slots (and fails the run); back-pressure is counted. */
    final ClientStatusListenerExt listener = new ClientStatusListenerExt() {
        @Override
        public void connectionLost(String host, int port, int left, DisconnectCause cause) {
            if (closing) {
                return;
            }
            System.err.printf("VoterClient: connection to %s:%d lost (%s)%n", host, port, cause);
            lost = true;
        }

        @Override
        public void backpressure(boolean on) {
            if (on) {
                backpressure.increment();
            }
        }

        @Override
        public void uncaughtException(ProcedureCallback cb, ClientResponse r, Throwable e) {
            System.err.println("VoterClient: callback failed: " + e);
        }
    };

    int run() throws Exception {
        List<Client> clients = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            ClientConfig config = new ClientConfig("", "", listener);
            config.setMaxOutstandingTxns(Math.max(3000, 2 * outstanding));
            config.setMaxTransactionsPerSecond(Integer.MAX_VALUE);
            config.setReconnectOnConnectionLoss(false);
            Client client = ClientFactory.createClient(config);
            String server = servers[i % servers.length];
            int colon = server.lastIndexOf(':');
            if (colon < 0) {
                client.createConnection(server, Client.VOLTDB_SERVER_PORT);
            } else {
                client.createConnection(server.substring(0, colon),
                                        Integer.parseInt(server.substring(colon + 1)));
            }
            clients.add(client);
        }
        if (outstanding < connections) {
            System.err.printf("VoterClient: %d outstanding calls use only %d of the %d connections%n",
                              outstanding, outstanding, connections);
        }
        System.err.printf(Locale.ROOT, "VoterClient: %s, %d connection(s),"
                          + " %d calls outstanding, %.1fs warm-up, %.1fs measured%n",
                          String.join(",", servers), connections, outstanding, warmup, duration);

        retries = Executors.newSingleThreadScheduledExecutor();
        stopped = new CountDownLatch(outstanding);
        SplittableRandom seeds = new SplittableRandom(seed);
        List<Slot> slots = new ArrayList<>();
        for (int j = 0; j < outstanding; j++) {
            slots.add(new Slot(clients.get(j % connections), seeds.split()));
        }

        long start = System.nanoTime();
        for (Slot s : slots) {
            s.call();
        }
        sleepUntil(start + (long) (warmup * 1e9));
        Mark a = mark();
        sleepUntil(a.nanos() + (long) (duration * 1e9));
        Mark b = mark();
        stopping = true;
        boolean drained = stopped.await(60, TimeUnit.SECONDS);
        retries.shutdownNow();

        double secs = (b.nanos() - a.nanos()) / 1e9;
        long okOps = b.ok() - a.ok();
        double cpu = a.cpuNanos() < 0 ? -1 : (b.cpuNanos() - a.cpuNanos()) / 1e9;
        System.err.printf(Locale.ROOT, "VoterClient: %,d ok in %.3fs = %,.0f/s, window cpu %.3fs"
                          + " (%.2f us/op)%s%n", okOps, secs, okOps / secs, cpu,
                          okOps > 0 ? cpu * 1e6 / okOps : 0.0,
                          drained ? "" : "; calls still in flight after 60 s");
        errorKinds.forEach((k, n) -> System.err.printf("VoterClient: %,d errors: %s%n", n.sum(), k));
        if (backpressure.sum() > 0) {
            System.err.printf("VoterClient: backpressure signalled %,d times%n", backpressure.sum());
        }
        System.out.printf(Locale.ROOT, "ops=%d secs=%.6f accepted=%d errors=%d invalid=%d"
                          + " over_limit=%d window_cpu_secs=%.6f total_ok=%d%n", okOps, secs,
                          b.accepted() - a.accepted(), b.errors() - a.errors(),
                          b.invalid() - a.invalid(), b.overLimit() - a.overLimit(), cpu, ok.sum());
        System.out.flush();
        boolean failed = !drained || lost;
        closing = true;
        if (drained) {
            for (Client client : clients) {
                client.close();
            }
        }
        return failed ? 1 : 0;
    }

    static void sleepUntil(long deadline) throws InterruptedException {
        for (long left; (left = deadline - System.nanoTime()) > 0; ) {
            TimeUnit.NANOSECONDS.sleep(left);
        }
    }
}
