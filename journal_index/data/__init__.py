"""The data-access layer, the only modules holding SQL for the local index: the store (is the file
ours, the connection, migrations, recovery), the index side's statements, the query side's
reads, disk-full and read-only errors, and export through sqlite-utils.
"""
