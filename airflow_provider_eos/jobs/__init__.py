"""The spark-submit entry script (``eos_job.py``) and example transforms, shipped inside the provider."""
