"""The hook engine: BaseHook, what a step saves, what it holds, stop requests, the end of a job, the guard that keeps an error in the hook from stopping training, resuming in a folder."""
