"""Regression from released marginals (DD-SSP), AIM-Synth and the DP baselines."""
