"""Hub client side: the content hash (``packaging``), the API client (``client``) and ``install``."""
