"""The Ape-X runner: the replay, the actors and the learner as processes on one machine or
a Ray cluster (`runner = 'replay'`: Ape-X DQN and Ape-X DPG).
"""
