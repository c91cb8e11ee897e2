"""Stage 2: kernel trees from Debian packages, patch series, config
fragments, and cached variant builds."""
