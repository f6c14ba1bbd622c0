"""sqlite"""
