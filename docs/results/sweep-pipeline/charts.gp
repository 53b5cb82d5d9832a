# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "pipeline=1" 1.4 2.35 1.24937 4.99937
"twemproxy" "pipeline=2" 0.9 1.25 0.559524 2.70952
"twemproxy" "pipeline=5" 0.65 0.84 0.304342 1.79434
"twemproxy" "pipeline=10" 0.35 0.46 0.144095 0.954095
"twemproxy" "pipeline=20" 0.27 0.35 0.100165 0.720165
"twemproxy" "pipeline=50" 0.2 0.31 0.053709 0.563709
"cluster" "pipeline=1" 1.18 0 1.02862 2.20862
"cluster" "pipeline=2" 0.51 0 0.457729 0.967729
"cluster" "pipeline=5" 0.32 0 0.211185 0.531185
"cluster" "pipeline=10" 0.24 0 0.128392 0.368392
"cluster" "pipeline=20" 0.2 0 0.072679 0.272679
"cluster" "pipeline=50" 0.18 0 0.046301 0.226301
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "pipeline=1" 35087.9 30328.2 36141.4 2269.18 2002.94 2891.78 14245634
"twemproxy" "pipeline=2" 58101.4 48085.6 66303 2027.52 1789.95 2711.55 14245634
"twemproxy" "pipeline=5" 81176.8 79601.6 103688 3842.05 2318.34 3874.82 14245634
"twemproxy" "pipeline=10" 149260 140460 155098 4055.04 3039.23 4636.67 14245634
"twemproxy" "pipeline=20" 217959 203175 222362 4341.76 3645.44 4505.6 14245634
"twemproxy" "pipeline=50" 266354 235884 267313 5881.86 5390.34 6242.3 14245634
"cluster" "pipeline=1" 74147.7 67796.6 74745.5 4038.66 3891.2 4243.46 1810039
"cluster" "pipeline=2" 177266 151120 177548 3104.77 2383.87 3497.98 1810039
"cluster" "pipeline=5" 303209 301760 315965 4210.69 4071.42 4636.67 1810039
"cluster" "pipeline=10" 451344 447113 460334 4833.28 4374.53 4964.35 1810039
"cluster" "pipeline=20" 582130 577085 589789 8486.91 8486.91 8617.98 1810039
"cluster" "pipeline=50" 677974 647459 698141 9076.74 9076.74 13140 1810039
EOD

$lat0 << EOD
-0 26.749
0.25 130.304
0.5 218.624
0.75 318.464
1 441.344
1.25 608.256
1.5 878.592
1.75 1314.82
2 2002.94
2.25 3055.62
2.5 4276.22
2.75 5455.87
3 7389.18
3.25 10387.5
3.5 13140
3.75 17891.3
4 20643.8
4.25 25755.6
4.5 25755.6
4.75 54553.2
5 54553.2
EOD
$lat1 << EOD
-0 27.351
0.25 160.256
0.5 291.84
0.75 402.432
1 500.736
1.25 612.352
1.5 784.384
1.75 1110.02
2 1789.95
2.25 2678.78
2.5 3596.29
2.75 4341.76
3 5390.34
3.25 7520.26
3.5 10256.4
3.75 11960.3
4 12222.5
4.25 14843.9
4.5 15433.7
4.75 22822.7
5 22822.7
EOD
$lat2 << EOD
-0 35.496
0.25 330.752
0.5 506.88
0.75 665.6
1 882.688
1.25 1298.43
1.5 2052.1
1.75 2957.31
2 3874.82
2.25 4636.67
2.5 5160.96
2.75 5586.94
3 6897.66
3.25 8142.85
3.5 8814.59
3.75 12353.5
4 13008.9
4.25 15368.2
4.5 16089.1
4.75 16089.1
5 16089.1
EOD
$lat3 << EOD
-0 49.657
0.25 472.064
0.5 595.968
0.75 743.424
1 935.936
1.25 1208.32
1.5 2002.94
1.75 2596.86
2 3039.23
2.25 3481.6
2.5 5423.1
2.75 5783.55
3 6209.54
3.25 6471.68
3.5 8241.15
3.75 8421.38
4 8421.38
4.25 8483.31
4.5 8483.31
4.75 8483.31
5 8483.31
EOD
$lat4 << EOD
-0 52.18
0.25 530.432
0.5 759.808
0.75 1001.47
1 1331.2
1.25 1986.56
1.5 2924.54
1.75 3661.82
2 4505.6
2.25 5193.73
2.5 5980.16
2.75 6668.29
3 6930.43
3.25 7356.42
3.5 8683.52
3.75 8683.52
4 8749.06
4.25 8749.06
4.5 8749.06
4.75 8749.06
5 8749.06
EOD
$lat5 << EOD
-0 132.882
0.25 1347.58
0.5 1806.34
0.75 2285.57
1 3072
1.25 3874.82
1.5 4472.83
1.75 5292.03
2 5881.86
2.25 6242.3
2.5 6963.2
2.75 7454.72
3 7585.79
3.25 15564.8
3.5 15564.8
3.75 15564.8
4 15564.8
4.25 15564.8
4.5 15564.8
4.75 15564.8
5 15564.8
EOD
$lat6 << EOD
-0 12.422
0.25 242.176
0.5 400.384
0.75 542.72
1 714.752
1.25 1034.24
1.5 1806.34
1.75 3055.62
2 4038.66
2.25 4702.21
2.5 5324.8
2.75 6012.93
3 7061.5
3.25 8945.66
3.5 9666.56
3.75 10321.9
4 11894.8
4.25 12025.9
4.5 12091.4
4.75 12156.9
5 12156.9
EOD
$lat7 << EOD
-0 13.281
0.25 308.224
0.5 433.152
0.75 515.072
1 616.448
1.25 763.904
1.5 1042.43
1.75 1822.72
2 2383.87
2.25 3727.36
2.5 4472.83
2.75 5128.19
3 5488.64
3.25 5914.62
3.5 6602.75
3.75 8208.38
4 10911.7
4.25 11173.9
4.5 11370.5
4.75 11436
5 11436
EOD
$lat8 << EOD
-0 16.268
0.25 316.416
0.5 538.624
0.75 759.808
1 976.896
1.25 1306.62
1.5 1921.02
1.75 3088.38
2 4210.69
2.25 5718.02
2.5 8175.62
2.75 8339.46
3 12222.5
3.25 12288
3.5 16220.2
3.75 16220.2
4 16220.2
4.25 16220.2
4.5 16270.9
4.75 16270.9
5 16270.9
EOD
$lat9 << EOD
-0 18.596
0.25 604.16
0.5 878.592
0.75 1042.43
1 1265.66
1.25 1478.66
1.5 2019.33
1.75 3694.59
2 4374.53
2.25 6668.29
2.5 7979.01
2.75 8110.08
3 8880.13
3.25 14581.8
3.5 14909.4
3.75 17498.1
4 17498.1
4.25 17629.2
4.5 17629.2
4.75 17629.2
5 17629.2
EOD
$lat10 << EOD
-0 51.538
0.25 515.072
0.5 833.536
0.75 1478.66
1 2760.7
1.25 4669.44
1.5 8011.78
1.75 8486.91
2 8617.98
2.25 8683.52
2.5 8749.06
2.75 12419.1
3 12484.6
3.25 12484.6
3.5 12550.1
3.75 12550.1
4 12550.1
4.25 12550.1
4.5 12550.1
4.75 12550.1
5 12550.1
EOD
$lat11 << EOD
-0 30.772
0.25 1634.3
0.5 2678.78
0.75 3760.13
1 4538.37
1.25 5259.26
1.5 8749.06
1.75 8945.66
2 9076.74
2.25 9207.81
2.5 9601.02
2.75 9863.17
3 9994.24
3.25 10190.8
3.5 10233.8
3.75 10233.8
4 10233.8
4.25 10233.8
4.5 10233.8
4.75 10233.8
5 10233.8
EOD

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'cpu.png'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 1000,520 background rgb 'white' noenhanced
}
set output 'throughput_p99.png'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:11.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'latency.png'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:5]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=1', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=2', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=5', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=10', \
     $lat4 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=20', \
     $lat5 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=50', \
     $lat6 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=1', \
     $lat7 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=2', \
     $lat8 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=5', \
     $lat9 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=10', \
     $lat10 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=20', \
     $lat11 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=50'
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'cpu.svg'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

set terminal svg size 1000,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'throughput_p99.svg'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:11.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'latency.svg'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:5]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=1', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=2', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=5', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=10', \
     $lat4 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=20', \
     $lat5 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy pipeline=50', \
     $lat6 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=1', \
     $lat7 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=2', \
     $lat8 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=5', \
     $lat9 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=10', \
     $lat10 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=20', \
     $lat11 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster pipeline=50'
unset output
