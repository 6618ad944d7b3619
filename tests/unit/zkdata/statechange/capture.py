"""How the state-change logs beside this file were made: a real ZooKeeper-mode cluster (streaming/infra/zkcluster.py:
ZooKeeper 3.8.4, three Kafka 3.9.1 brokers) creates a topic, loses a broker that is not the controller (kill -9),
starts it again and deletes the topic; then the controller's and that broker's state-change.log are copied here.

    PYTHONPATH=$PWD .venv/bin/python tests/unit/zkdata/statechange/capture.py OUT [INTER_BROKER_PROTOCOL]
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from streaming.infra.zkcluster import ZkCluster


def capture(out: Path, inter_broker_protocol: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with ZkCluster(brokers=3, inter_broker_protocol=inter_broker_protocol, root=out / "cluster") as c:
        c.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
        c.wait_until(lambda: all(p["isr"] == [1, 2, 3] for p in c.describe("t").values()), what="full ISRs")
        controller = c.controller_id()
        broker = next(b for b in c.brokers if b != controller)
        c.kill(broker)
        c.wait_fenced(broker)
        c.restart(broker)
        c.wait_until(lambda: all(p["isr"] == [1, 2, 3] for p in c.describe("t").values()), what="full ISRs")
        c.delete_topic("t")
        c.wait_until(lambda: "t" not in c.list_topics(), what="t deleted")
        time.sleep(1)  # the last responses and metadata updates
        suffix = f"-ibp{inter_broker_protocol}" if inter_broker_protocol else ""
        shutil.copy(c.state_change_log(controller), out / f"controller-{controller}{suffix}.state-change.log")
        shutil.copy(c.state_change_log(broker), out / f"broker-{broker}{suffix}.state-change.log")


if __name__ == "__main__":
    capture(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
