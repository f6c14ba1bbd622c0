"""anchors"""
