from lawkit.cli import main

main()
