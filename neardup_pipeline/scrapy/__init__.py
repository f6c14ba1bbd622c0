"""scrapy"""
