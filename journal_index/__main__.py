from journal_index.agent.entry_point import main

main()
