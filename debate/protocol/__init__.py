"""The debate itself: PRO and CON debaters write openings, cross-examine and close."""
