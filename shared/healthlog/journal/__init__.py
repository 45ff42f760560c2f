"""The journal: accounts, deliveries (the queue) and the showcase, in one database."""
