/* The Voter's one transaction, as VoltDB's example defines it: check the
 * contestant, check the caller's vote count against the limit, look up the
 * state of the area code, record the vote. Partitioned on phone_number
 * (parameter 0), so it runs single-partition, serially per partition.
 * Return codes: 0 accepted, 1 invalid contestant, 2 over the vote limit. */
package voter;

import org.voltdb.SQLStmt;
import org.voltdb.VoltProcedure;
import org.voltdb.VoltTable;

public class Vote extends VoltProcedure {
    public static final long ACCEPTED = 0;
    public static final long INVALID_CONTESTANT = 1;
    public static final long OVER_LIMIT = 2;

    public final SQLStmt contestant = new SQLStmt(
        "SELECT contestant_number FROM contestants WHERE contestant_number = ?;");
    public final SQLStmt votesOfPhone = new SQLStmt(
        "SELECT num_votes FROM v_votes_by_phone_number WHERE phone_number = ?;");
    public final SQLStmt stateOfArea = new SQLStmt(
        "SELECT state FROM area_code_state WHERE area_code = ?;");
    public final SQLStmt record = new SQLStmt(
        "INSERT INTO votes (phone_number, state, contestant_number) VALUES (?, ?, ?);");

    public long run(long phoneNumber, int contestantNumber, long maxVotesPerPhoneNumber) {
        voltQueueSQL(contestant, contestantNumber);
        voltQueueSQL(votesOfPhone, phoneNumber);
        voltQueueSQL(stateOfArea, (short) (phoneNumber / 10000000L));
        VoltTable[] found = voltExecuteSQL();
        if (found[0].getRowCount() == 0) {
            return INVALID_CONTESTANT;
        }
        if (found[1].getRowCount() > 0 && found[1].asScalarLong() >= maxVotesPerPhoneNumber) {
            return OVER_LIMIT;
        }
        String state = found[2].getRowCount() > 0 ? found[2].fetchRow(0).getString(0) : "XX";
        voltQueueSQL(record, phoneNumber, state, contestantNumber);
        voltExecuteSQL(true);
        return ACCEPTED;
    }
}
