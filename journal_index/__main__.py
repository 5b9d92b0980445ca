from journal_index.cli import main

main()
