"""Utility package root for Slime."""
