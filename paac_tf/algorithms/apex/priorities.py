"""Ape-X DQN's priorities: the n-step double-Q TD error (numpy, in the actors).

Actors compute the initial priority before inserting, with their local network as both
online and target network (Ape-X, section 3): the double-Q target then reduces to
R + D * max_a Q(s', a). |TD error| + epsilon, the importance weights and the learner's
priorities are prioritized replay's, shared by the Ape-X machinery
(algorithms/replay/prioritized.py).
"""
import numpy as np

from paac_tf.algorithms.replay import prioritized


def double_q_td_errors_np(q_taken, reward, discount, next_q_online, next_q_target):
  """n-step double-Q TD errors, numpy: R + D * Q_target(s', argmax Q_online(s')) - Q(s, a).

  q_taken [M]; reward, discount [M]; next_q_online, next_q_target [M, A].
  """
  next_q_online = np.asarray(next_q_online, np.float32)
  next_q_target = np.asarray(next_q_target, np.float32)
  best = np.argmax(next_q_online, axis=-1)
  bootstrap = np.take_along_axis(next_q_target, best[:, None], axis=-1)[:, 0]
  target = np.asarray(reward, np.float32) + np.asarray(discount, np.float32) * bootstrap
  return target - np.asarray(q_taken, np.float32)


def initial_priorities(q_taken, reward, discount, next_q, epsilon=prioritized.PRIORITY_EPSILON):
  """The actor's priorities: |TD error| + epsilon with its network as online and target."""
  td = double_q_td_errors_np(q_taken, reward, discount, next_q, next_q)
  return prioritized.priorities_from_td_np(td, epsilon)
