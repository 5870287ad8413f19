"""`python -m paac_tf.evaluate`: runs paac_tf/commands/evaluate.py as the main module."""
import runpy

if __name__ == "__main__":
  runpy.run_module("paac_tf.commands.evaluate", run_name="__main__", alter_sys=True)
