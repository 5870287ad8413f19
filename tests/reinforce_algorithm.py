"""A third algorithm, for the tests: REINFORCE with a learned baseline (Williams 1992), as one
loss function and its registration (docs/extending.md).

Each update takes the synchronous runner's rollout (t_max steps of n_e environments), the
discounted returns G_t of those steps (cut at episode ends; not bootstrapped at the
segment's end: the bootstrap values the runner passes are ignored), and descends
-mean(log pi(a_t|s_t) * (G_t - V(s_t))) + mean((G_t - V(s_t))^2) / 2 on PAAC's actor-critic
network with PAAC's optimizer. A gin config imports this module (`import
reinforce_algorithm`), which registers the algorithm; `train_eval.algorithm = 'reinforce'`
then trains it with `python -m paac_tf.train` (the runner's settings are the `paac.*` ones),
and export, evaluation and `paac_tf.load_policy` work as for the package's own algorithms.
"""
import tensorflow as tf

from paac_tf.algorithms import registry
from paac_tf.algorithms.paac import algorithm as paac_algorithm


def discounted_returns(rewards, discounts, next_is_last, gamma):
  """G_t = r_{t+1} + gamma * d_{t+1} * G_{t+1} over [T, B] tensors (step t: reward and
  discount of arriving at time step t+1), G_{t+1} = 0 where time step t+1 is LAST (the next
  step is a new episode's) and after the segment's last step."""
  def back(future, step):
    reward, discount, last = step
    return reward + gamma * discount * tf.where(last, tf.zeros_like(future), future)
  return tf.scan(back, (rewards, discounts, next_is_last), initializer=tf.zeros_like(rewards[0]),
                 reverse=True)


def reinforce_loss(logits, baseline, actions, rollout, values, settings):
  """Policy gradient with the baseline, and the baseline's regression to the returns (means
  over the valid steps, not those from a LAST step): update.loss's arguments (the model's
  logits [T * B, A] and values [T * B], actions [T, B], the rollout [4, T, B], the acting
  values [T + 1, B], the settings: gamma), its (total, metrics) with the one metric
  Losses/total (train_step adds the learning rate and the gradient's norm)."""
  del values   # no bootstrap: the returns end with the segment
  rewards, discounts, next_is_last, is_last = tf.unstack(rollout)
  returns = tf.reshape(
      discounted_returns(rewards, discounts, next_is_last > 0.5, settings.gamma), [-1])
  valid = tf.reshape(1.0 - is_last, [-1])
  advantages = tf.stop_gradient(returns - baseline)
  log_probs = tf.gather(tf.nn.log_softmax(tf.cast(logits, tf.float32)),
                        tf.reshape(actions, [-1]), batch_dims=1)
  loss = tf.reduce_sum(valid * (-log_probs * advantages + 0.5 * (returns - baseline) ** 2))
  loss = loss / tf.maximum(tf.reduce_sum(valid), 1.0)
  return loss, (loss,)


class Reinforce(paac_algorithm.Paac):
  """REINFORCE with a learned baseline (tests only): PAAC's network and optimizer, its own
  loss."""
  name = "reinforce"
  display_name = "REINFORCE"
  output_names = ("action", "probabilities")
  metric_names = ("Losses/total", "Optimizer/learning_rate", "Optimizer/global_norm")
  loss = staticmethod(reinforce_loss)


ALGORITHM = registry.register(Reinforce())
