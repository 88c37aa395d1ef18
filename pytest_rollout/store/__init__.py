"""What is kept on disk beside the runs, a whole file at a time: each test's golden and its
receipt (written as one unit through pending files, settled after a crash), the capture
folder where runs are saved, and the hash-chained audit trail."""
