"""The matrix as a pytest session: one test item per cell (see conftest)."""
