"""Black Widow: the hub. Owns crawl configuration and coordinates the spawns."""
