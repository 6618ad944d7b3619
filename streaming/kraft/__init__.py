"""Reading a KRaft cluster's metadata log (`__cluster_metadata-0`) and turning it into isrflow's contract."""
