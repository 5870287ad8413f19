"""n-step bootstrapped returns and advantages for PAAC rollouts (pure functions).

Time-major arrays over a rollout of T steps and B environments. Step t goes from
time step ts_t (observation s_t, action a_t) to ts_{t+1}:
  rewards[t]    reward of ts_{t+1}
  discounts[t]  discount of ts_{t+1} (0 when the episode terminated there)
  next_is_last[t]  ts_{t+1} is LAST (terminated or truncated)
  values[t]     V(s_t) for t = 0..T; values[T] is the value of the rollout's last obs.
  valid[t]      ts_t is not LAST (a step taken from a LAST time step is the env's
                auto-reset, not a real transition; it is masked out of the loss).

R_t = r_t + gamma * d_t * B_{t+1}, where B_{t+1} = V(s_{t+1}) when ts_{t+1} is LAST
or t + 1 = T, else R_{t+1}. A terminated episode (d = 0) does not bootstrap; a
truncated one (d = 1) bootstraps from the value of its true final observation, which
the LAST time step carries (not the auto-reset one).
"""
import tensorflow as tf


def n_step_returns(rewards, discounts, next_is_last, values, gamma):
  """Returns R [T, B] as defined above. `values` is [T + 1, B]."""
  rewards = tf.convert_to_tensor(rewards, tf.float32)
  discounts = tf.convert_to_tensor(discounts, tf.float32)
  next_is_last = tf.convert_to_tensor(next_is_last, tf.bool)
  values = tf.convert_to_tensor(values, tf.float32)
  num_steps = rewards.shape[0]
  if num_steps is None:
    raise ValueError("n_step_returns needs a static rollout length.")
  returns = [None] * num_steps
  bootstrap = values[num_steps]
  for t in reversed(range(num_steps)):
    if t + 1 < num_steps:
      bootstrap = tf.where(next_is_last[t], values[t + 1], returns[t + 1])
    returns[t] = rewards[t] + gamma * discounts[t] * bootstrap
  return tf.stack(returns, axis=0)


def valid_mask(step_types_is_last):
  """valid[t] = ts_t is not LAST, as float32."""
  return 1.0 - tf.cast(step_types_is_last, tf.float32)


def advantages(returns, values):
  """A_t = R_t - V(s_t); `values` is V(s_0..s_{T-1}) [T, B]."""
  return tf.convert_to_tensor(returns, tf.float32) - tf.convert_to_tensor(values, tf.float32)
