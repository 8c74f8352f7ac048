"""Configuration values: what to save, how often, reduced how; collections; the hook's options and SageMaker's hook JSON."""
