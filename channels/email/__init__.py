"""Email: each request emailed (plain text and HTML) through SMTP, answered on its web form."""
