// PLACEHOLDER (being written): the proc transport.
