"""Data files shipped with the package: default roles and topic profiles."""
