"""A real controller's history beside isrflow's: agreement per decision and per partition history, shared by
every source of a real cluster's history (a KRaft metadata log, a ZooKeeper transaction log)."""
