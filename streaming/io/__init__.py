"""Where outputs live, Delta tables read and written without Spark, event logs."""
