from journal_index.entry_point import main

main()
