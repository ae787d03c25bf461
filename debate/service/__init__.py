"""The service for integrations: HTTP API with durable jobs, an MCP server, a page.

An optional extra (``pip install -e ".[server]"``); nothing below imports it.
"""
