"""Reports from the results folders: README sections, results/*.md pages and plots, and the
readers of runs they share (run_record, run_labels, run_groups, run_results, seed_runs)."""
