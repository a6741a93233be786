"""The AIM mechanism (adaptive select-measure-reconstruct) returning a release."""
