"""The Ape-X learner's Perf/* rates and samples per insert, against hand-computed values."""
import pytest

from paac_tf.runners.apex import learner_rates

Tally = learner_rates.Tally


def test_rates_over_two_seconds_of_training():
  # 2 s: 100 learner steps of 64 samples, 1,600 agent steps, 3,200 items inserted.
  values = learner_rates.rates(Tally(10.0, 400, 8000, 6000), Tally(12.0, 500, 9600, 9200), 64)
  assert values == pytest.approx({
      "Perf/learner_steps_per_second": 50.0,       # 100 / 2
      "Perf/agent_steps_per_second": 800.0,        # 1,600 / 2
      "Perf/inserts_per_second": 1600.0,           # 3,200 / 2
      "Replay/samples_per_insert": 2.0,            # 100 x 64 / 3,200
  })


def test_no_samples_per_insert_without_inserts():
  # The actors waited at the rate limiter: no inserts, so no ratio (not a division by zero).
  values = learner_rates.rates(Tally(0.0, 0, 0, 500), Tally(0.5, 10, 0, 500), 32)
  assert values == pytest.approx({"Perf/learner_steps_per_second": 20.0,
                                  "Perf/agent_steps_per_second": 0.0,
                                  "Perf/inserts_per_second": 0.0})


def test_no_elapsed_time_is_not_a_division_by_zero():
  values = learner_rates.rates(Tally(5.0, 1, 1, 1), Tally(5.0, 1, 1, 1), 32)
  assert values["Perf/learner_steps_per_second"] == 0.0
