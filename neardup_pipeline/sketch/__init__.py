"""sketch"""
