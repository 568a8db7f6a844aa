"""spark-submit entry script and example transforms."""
