"""Widgets and plots, one module per lesson: a plain compute function plus a thin ipywidgets layer."""
