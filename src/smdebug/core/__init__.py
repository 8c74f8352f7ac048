"""Framework-agnostic building blocks: modes, configs, collections, key names, the writer."""
