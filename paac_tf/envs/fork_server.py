"""Imported by multiprocessing's fork server alone (`worker_pool`'s preload list, last):
the fork server ends at once when its parent is gone, instead of tearing down the
TensorFlow it preloaded (3.5 s measured on a busy 2-core machine, during which it outlived
the command that started it). Nothing else imports this module.

The fork server leaves its loop with SystemExit once the parent's end of its "alive" pipe
closes; the interpreter then runs the atexit handlers, the last registered first: this one,
registered after TensorFlow's (imported by the modules preloaded before), ends the process.
The environment workers forked from it never run atexit handlers (the fork server ends
each with os._exit).
"""
import atexit
import os
import sys


def _exit_at_once():
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(0)  # pylint: disable=protected-access


atexit.register(_exit_at_once)
