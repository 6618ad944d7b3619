"""Data quality of the audit table: a versioned Great Expectations suite, `isrflow_audit_v1`, run through Spark.

By role:
- `rules`: the expectations as pure data (name, description, severity, Spark SQL over the prepared audit) and
  the suite variants the inputs allow. No Spark, no GX.
- `results`: the verdict, pure (`RuleResult`, `QualityReport`, the exit code).
- `prepare`: the prepared audit (Spark): the audit columns plus the `q_*` context columns several rules need
  (physical row order, a partition's incarnation, the previous row's epochs, the highest controller epoch
  earlier in the log, the decisions each row produced, the partition's replicas); finding the decisions beside
  an audit table.
- `gx`: the Great Expectations adapter (the suite, the ephemeral context, GX's results read back).
- `runner`: `run_suite`, `isrflow check` (`check`), and the streaming query's per-batch `quality_on_batch`.

`docs/quality.md` describes the rules and their cost.
"""
