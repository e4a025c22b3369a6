/* Sets up the Voter's fixed data, idempotently: contestants 1..N from a
 * comma-separated list of names, and the area codes from "code:ST,..."
 * pairs. Rows already there are left alone. Returns the number of
 * contestants. A multi-partition transaction over replicated tables. */
package voter;

import java.util.HashSet;
import java.util.Set;

import org.voltdb.SQLStmt;
import org.voltdb.VoltProcedure;
import org.voltdb.VoltTable;

public class Initialize extends VoltProcedure {
    /** VoltDB runs at most this many queued statements in one batch. */
    private static final int BATCH = 200;

    public final SQLStmt contestantNumbers = new SQLStmt(
        "SELECT contestant_number FROM contestants;");
    public final SQLStmt addContestant = new SQLStmt(
        "INSERT INTO contestants (contestant_name, contestant_number) VALUES (?, ?);");
    public final SQLStmt areaCodes = new SQLStmt(
        "SELECT area_code FROM area_code_state;");
    public final SQLStmt addArea = new SQLStmt(
        "INSERT INTO area_code_state (area_code, state) VALUES (?, ?);");
    public final SQLStmt contestantCount = new SQLStmt(
        "SELECT COUNT(*) FROM contestants;");

    public long run(int contestants, String names, String areas) {
        String[] name = names.split(",");
        if (contestants < 1 || contestants > name.length) {
            throw new VoltAbortException("contestants must be 1 to " + name.length);
        }
        voltQueueSQL(contestantNumbers);
        voltQueueSQL(areaCodes);
        VoltTable[] present = voltExecuteSQL();
        Set<Long> haveContestant = column(present[0]);
        Set<Long> haveArea = column(present[1]);

        int queued = 0;
        for (int i = 0; i < contestants; i++) {
            if (!haveContestant.contains((long) (i + 1))) {
                voltQueueSQL(addContestant, name[i], i + 1);
                queued = flushWhenFull(queued + 1);
            }
        }
        for (String pair : areas.split(",")) {
            int colon = pair.indexOf(':');
            short code = Short.parseShort(pair.substring(0, colon));
            if (!haveArea.contains((long) code)) {
                voltQueueSQL(addArea, code, pair.substring(colon + 1));
                queued = flushWhenFull(queued + 1);
            }
        }
        voltQueueSQL(contestantCount);
        return voltExecuteSQL(true)[0].asScalarLong();
    }

    private int flushWhenFull(int queued) {
        if (queued < BATCH - 1) {
            return queued;
        }
        voltExecuteSQL();
        return 0;
    }

    private static Set<Long> column(VoltTable t) {
        Set<Long> values = new HashSet<>();
        while (t.advanceRow()) {
            values.add(t.getLong(0));
        }
        return values;
    }
}
