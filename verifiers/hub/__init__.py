"""Hub client side: packaging (the content hash) and, later, publish/install."""
