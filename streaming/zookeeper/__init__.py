"""A ZooKeeper-mode cluster's history: ZooKeeper's transaction log and snapshots, read with a decoder of
ZooKeeper's file format, and turned into contract events and the controller's observed decisions
(docs/zookeeper.md)."""
