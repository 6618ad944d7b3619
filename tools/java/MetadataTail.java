// A long-lived decoder of KRaft metadata log files for `isrflow bridge` (streaming/kraft/follow.py), built on
// Kafka's own classes: FileRecords for the batches, MetadataRecordSerde and MetadataJsonConverters for the
// records, as `kafka.tools.DumpLogSegments --cluster-metadata-decoder` does. Compiled against Kafka 4.1's jars,
// or a newer release's (streaming/kraft/tail.py imports the record classes from where that release keeps them:
// Kafka 4.4's in org.apache.kafka.common.record.internal).
//
// Each stdin line is one command, `POSITION LIMIT PATH`: decode the segment (*.log) or snapshot (*.checkpoint) at
// PATH from byte POSITION on, whole batches until LIMIT bytes are read or the file ends. The answer is the lines
// DumpLogSegments prints for those batches (a batch header line, then `| offset: N CreateTime: T ... payload:
// {json}` per record), then `#end P`: P is the byte position after the last batch read. A batch not yet whole (a
// file still being written or copied) is left for the next command. A command that fails answers `#error
// MESSAGE`. The program ends when stdin closes.
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class MetadataTail {
    private final PrintWriter out;

    MetadataTail(PrintWriter out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new BufferedWriter(
                new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16), false);
        MetadataTail tail = new MetadataTail(out);
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) continue;
            String[] command = line.split(" ", 3);
            try {
                long end = tail.decode(new File(command[2]), Integer.parseInt(command[0]),
                        Long.parseLong(command[1]));
                out.println("#end " + end);
            } catch (Exception e) {
                out.println("#error " + String.valueOf(e).replace('\n', ' '));
            }
            out.flush();
        }
    }

    long decode(File file, int position, long limit) throws Exception {
        long end = position;
        // Read-only, and only its channel closed: FileRecords.close() trims the file to the size it had when
        // opened, which on a segment the node is appending to would cut its new batches.
        FileRecords records = FileRecords.open(file, false);
        try {
            // batchesFrom stops before a batch whose bytes are not all there yet.
            for (FileChannelRecordBatch batch : records.batchesFrom(position)) {
                if (end - position >= limit) break;  // the rest in the next command: bounded answers
                if (!batch.isValid()) break;  // a batch being written out of order: read it next time
                header(batch, end);
                for (Record record : batch) {
                    out.print("| offset: " + record.offset() + " " + batch.timestampType() + ": " + record.timestamp()
                            + " keySize: " + record.keySize() + " valueSize: " + record.valueSize()
                            + " sequence: " + record.sequence() + " headerKeys: []");
                    if (batch.isControlBatch()) {
                        // Control records (leader changes, snapshot header and footer, voters) carry no
                        // metadata state: their type is enough.
                        short type = ControlRecordType.parseTypeId(record.key());
                        out.println(" controlType: " + ControlRecordType.fromTypeId(type) + "(" + type + ")");
                    } else {
                        out.println(" payload: " + payload(record));
                    }
                }
                end += batch.sizeInBytes();
            }
        } finally {
            records.channel().close();
        }
        return end;
    }

    private void header(FileChannelRecordBatch batch, long position) {
        out.println("baseOffset: " + batch.baseOffset() + " lastOffset: " + batch.lastOffset()
                + " count: " + batch.countOrNull() + " baseSequence: " + batch.baseSequence()
                + " lastSequence: " + batch.lastSequence() + " producerId: " + batch.producerId()
                + " producerEpoch: " + batch.producerEpoch() + " partitionLeaderEpoch: " + batch.partitionLeaderEpoch()
                + " isTransactional: " + batch.isTransactional() + " isControl: " + batch.isControlBatch()
                + " deleteHorizonMs: " + batch.deleteHorizonMs() + " position: " + position + " "
                + batch.timestampType() + ": " + batch.maxTimestamp() + " size: " + batch.sizeInBytes()
                + " magic: " + batch.magic() + " compresscodec: " + batch.compressionType().name
                + " crc: " + batch.checksum() + " isvalid: true");
    }

    private static String payload(Record record) {
        try {
            ApiMessageAndVersion message = MetadataRecordSerde.INSTANCE.read(
                    new ByteBufferAccessor(record.value()), record.valueSize());
            ObjectNode json = new ObjectNode(JsonNodeFactory.instance);
            json.set("type", new TextNode(MetadataRecordType.fromId(message.message().apiKey()).toString()));
            json.set("version", new IntNode(message.version()));
            json.set("data", MetadataJsonConverters.writeJson(message.message(), message.version()));
            return json.toString();
        } catch (Exception e) {
            // As DumpLogSegments: a record the decoder cannot read is reported, not fatal.
            return "Error at " + record.offset() + ", skipping. " + e.getMessage();
        }
    }
}
