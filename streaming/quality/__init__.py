"""Data quality on the transition audit: the rules, the Great Expectations adapter, the suite runner."""
