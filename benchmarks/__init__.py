"""chatmem's benchmarks: run ``python -m benchmarks`` from the repository root."""
