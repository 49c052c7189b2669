//! I/O workers: scraping engines' `/metrics` endpoints.
