"""Analysis shared by claims and plots (one public place both import)."""
