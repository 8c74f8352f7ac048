"""Output: event files and their index (FileWriter), the writer thread, TensorBoard files, consolidated index objects, the keys of every object, the records a step writes."""
