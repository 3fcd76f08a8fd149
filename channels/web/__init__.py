"""The hosted web form: the page rendered from a Human Function and the parsing of its posts."""
